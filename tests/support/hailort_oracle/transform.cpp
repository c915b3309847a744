// HailoRT's own frame transforms, driven from the oracle tests (tests/backends/test_hailort_oracle.py): built
// against a HailoRT build's public headers and libhailort (hailort: include/hailo/transform.hpp,
// OutputTransformContext / InputTransformContext). One case per request on stdin, one answer on stdout:
//
//   request: "d2h|h2d SRC_ORDER SRC_TYPE DST_ORDER DST_TYPE H W C PH PW PC NQ [ZP SCALE MIN MAX]*NQ NBYTES\n" + NBYTES bytes
//   answer:  "STATUS NBYTES\n" + NBYTES bytes          (STATUS: the hailo_status, 0 = HAILO_SUCCESS)
//
// Orders and types are hailo_format_order_t / hailo_format_type_t values; H W C the host shape, PH PW PC
// the device (hw) shape. d2h transforms a device frame to the host, h2d a host frame to the device.
#include "hailo/transform.hpp"

#include <iostream>
#include <string>
#include <vector>

using namespace hailort;

int main()
{
    std::ios::sync_with_stdio(false);
    std::string direction;
    while (std::cin >> direction) {
        int src_order, src_type, dst_order, dst_type, nq;
        uint32_t h, w, c, ph, pw, pc;
        std::cin >> src_order >> src_type >> dst_order >> dst_type >> h >> w >> c >> ph >> pw >> pc >> nq;
        std::vector<hailo_quant_info_t> quant(nq);
        for (auto &q : quant) {
            std::cin >> q.qp_zp >> q.qp_scale >> q.limvals_min >> q.limvals_max;
        }
        size_t nbytes;
        std::cin >> nbytes;
        std::cin.get();  // the newline before the payload
        std::vector<uint8_t> src(nbytes);
        std::cin.read(reinterpret_cast<char *>(src.data()), static_cast<std::streamsize>(nbytes));

        const hailo_3d_image_shape_t host{h, w, c};
        const hailo_3d_image_shape_t device{ph, pw, pc};
        const hailo_format_t src_format{static_cast<hailo_format_type_t>(src_type),
            static_cast<hailo_format_order_t>(src_order), HAILO_FORMAT_FLAGS_NONE};
        const hailo_format_t dst_format{static_cast<hailo_format_type_t>(dst_type),
            static_cast<hailo_format_order_t>(dst_order), HAILO_FORMAT_FLAGS_NONE};
        hailo_status status = HAILO_SUCCESS;
        std::vector<uint8_t> dst;
        if (direction == "d2h") {
            hailo_nms_info_t nms{};
            auto context = OutputTransformContext::create(device, src_format, host, dst_format, quant, nms);
            status = context.status();
            if (HAILO_SUCCESS == status) {
                dst.resize((*context)->get_dst_frame_size());
                status = (*context)->transform(MemoryView::create_const(src.data(), src.size()), MemoryView(dst.data(), dst.size()));
            }
        } else {
            auto context = InputTransformContext::create(host, src_format, device, dst_format, quant);
            status = context.status();
            if (HAILO_SUCCESS == status) {
                dst.resize((*context)->get_dst_frame_size());
                status = (*context)->transform(MemoryView::create_const(src.data(), src.size()), MemoryView(dst.data(), dst.size()));
            }
        }
        if (HAILO_SUCCESS != status) {
            dst.clear();
        }
        std::cout << static_cast<int>(status) << " " << dst.size() << "\n";
        std::cout.write(reinterpret_cast<const char *>(dst.data()), static_cast<std::streamsize>(dst.size()));
        std::cout.flush();
    }
    return 0;
}
